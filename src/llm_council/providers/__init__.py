"""Model providers: the official SDKs, OpenAI-compatible local servers, the simulated council."""
