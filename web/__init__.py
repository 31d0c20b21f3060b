"""The web surface: Gradio Blocks UI, its API endpoints and the FastAPI routes."""

from web import gradio_import

gradio_import.install()  # before any module here imports gradio (web/gradio_import.py)
