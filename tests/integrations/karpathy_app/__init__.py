"""A karpathy/llm-council-shaped app written here (its module shapes, none of its code)."""
