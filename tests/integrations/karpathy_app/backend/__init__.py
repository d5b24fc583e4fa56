"""The app's backend package: config, openrouter (offline fakes), council, storage, main."""
