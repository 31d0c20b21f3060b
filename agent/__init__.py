"""The Superset agent: settings, identity, events, the loop over litellm, tools and service."""
