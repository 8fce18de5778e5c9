# vertexbatch on Cloud Run, built from this checkout (docs/cloud-run.md has the whole recipe).
#
#   docker build -t IMAGE .                      the job image (the last stage, `job`)
#   docker build --target handlers -t IMAGE .    the HTTP handlers (examples/run_advancer.py,
#                                                examples/scheduler_poller.py) on functions-framework
#
# No package index serves vertexbatch: the `builder` stage builds its wheel from the checkout,
# and the runtime stages install that wheel with the `cli` extra only (click: the `vertexbatch`
# command beside examples/cloud_run_job.py). tests/docs/test_dockerfile.py checks this file
# statically; tests/docs/test_wheel_install.py installs the same wheel and extras into a fresh
# virtual environment and runs the job's entrypoint against the local stack.

FROM python:3.11-slim AS builder
WORKDIR /src
COPY pyproject.toml README.md ./
COPY vertexbatch ./vertexbatch
RUN python -m pip install --no-cache-dir --disable-pip-version-check build \
    && python -m build --wheel --outdir /wheels .

FROM python:3.11-slim AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=builder /wheels /wheels
RUN wheel="$(ls /wheels/vertexbatch-*-py3-none-any.whl)" \
    && python -m pip install --no-cache-dir "${wheel}[cli]" \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 vertexbatch
WORKDIR /app
COPY examples/cloud_run_job.py ./examples/cloud_run_job.py

FROM runtime AS handlers
RUN python -m pip install --no-cache-dir "functions-framework>=3.8,<4"
COPY examples/run_advancer.py examples/scheduler_poller.py ./examples/
USER vertexbatch
# Cloud Run sets PORT; which handler runs is FUNCTION_TARGET and FUNCTION_SOURCE, set at deploy
# (advance in examples/run_advancer.py, or poll in examples/scheduler_poller.py).
ENV FUNCTION_SIGNATURE_TYPE=http
ENTRYPOINT ["functions-framework"]

FROM runtime AS job
USER vertexbatch
# `gcloud run jobs deploy --args` gives the arguments; `--command vertexbatch` runs the command.
ENTRYPOINT ["python", "examples/cloud_run_job.py"]
