"""Benchmarks that compare the app with bare Gradio and FastAPI baselines (see README)."""
