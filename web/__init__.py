"""The web surface: Gradio Blocks UI, its API endpoints and the FastAPI routes."""
