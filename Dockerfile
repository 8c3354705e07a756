# kafkalite: a Kafka-compatible broker for tests and CI.
#
#   docker build -t kafkalite .
#   docker run --rm -p 9092:9092 kafkalite          # bootstrap localhost:9092
#
# Configured by environment variables that mirror the CLI flags (KAFKALITE_HOST, KAFKALITE_PORT,
# KAFKALITE_LISTENERS, KAFKALITE_ADVERTISED_LISTENERS, KAFKALITE_LOG_LEVEL, ...) and by
# KAFKALITE_<KEY> for any broker key (KAFKALITE_NUM_PARTITIONS=3 is num.partitions=3).
# See docs/ci-usage.md.
#
# BASE_IMAGE is any image with Python 3.11+, pip (run as `python3 -m pip`) and useradd: the
# official python:3.11-slim by default; the project's tests build on a Debian bookworm image made
# locally from Debian's packages (scripts/container-base.sh), so they need no outside registry.
ARG BASE_IMAGE=python:3.11-slim

FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY broker ./broker
COPY protocol ./protocol
COPY storage ./storage
COPY kafkalite ./kafkalite
RUN python3 -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

FROM ${BASE_IMAGE}
COPY --from=build /wheels /wheels
COPY docker/entrypoint.py /usr/local/bin/kafkalite-entrypoint
COPY docker/healthcheck.py /usr/local/bin/kafkalite-healthcheck
RUN python3 -m pip install --no-cache-dir --disable-pip-version-check "$(ls /wheels/kafkalite-*.whl)[compression,tls,schema-registry]" \
    && rm -rf /wheels \
    && chmod 0755 /usr/local/bin/kafkalite-entrypoint /usr/local/bin/kafkalite-healthcheck \
    && useradd --system --uid 10001 --user-group --home-dir /var/lib/kafkalite --no-create-home kafkalite \
    && mkdir -p /var/lib/kafkalite \
    && chown kafkalite:kafkalite /var/lib/kafkalite

ENV KAFKALITE_HOST=0.0.0.0 \
    KAFKALITE_PORT=9092 \
    KAFKALITE_DATA_DIR=/var/lib/kafkalite \
    KAFKALITE_READY_FILE=/tmp/kafkalite.ready \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
VOLUME ["/var/lib/kafkalite"]
# 8081: the schema registry, served when KAFKALITE_SCHEMA_REGISTRY=0.0.0.0:8081
EXPOSE 9092 8081
USER kafkalite
WORKDIR /var/lib/kafkalite
HEALTHCHECK --interval=5s --timeout=3s --start-period=5s --retries=3 CMD ["kafkalite-healthcheck"]
ENTRYPOINT ["kafkalite-entrypoint"]
