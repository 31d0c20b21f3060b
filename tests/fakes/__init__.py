"""Fakes at the network boundary (a scripted OpenAI-compatible server) and run helpers."""
