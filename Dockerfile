# The app on a slim Python, as a non-root user, with a health check on /api/health
# (which answers 503 while the database is away, so an orchestrator stops routing to it).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    GRADIO_ANALYTICS_ENABLED=False HF_HUB_DISABLE_TELEMETRY=1 LITELLM_LOCAL_MODEL_COST_MAP=True \
    GRADIO_SERVER_NAME=0.0.0.0 GRADIO_SERVER_PORT=7860 DATA_DIR=/data

RUN useradd --create-home --uid 1000 agent && mkdir /data && chown agent /data
WORKDIR /app
COPY --chown=agent . .
# The README's install command (without the test extras).
RUN pip install -q -e .

USER agent
EXPOSE 7860
VOLUME ["/data"]
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:7860/api/health', timeout=2).status == 200 else 1)"
CMD ["python", "app.py"]
