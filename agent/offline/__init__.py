"""The offline, deterministic model: a litellm custom provider and its rule-based brain."""
