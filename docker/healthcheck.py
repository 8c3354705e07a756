#!/usr/bin/env python3
"""Docker HEALTHCHECK: exit 0 when the broker answers a real ApiVersions request, else 1.

The address checked is, in order:
* the first argument (HOST:PORT);
* the first bound listener named in the broker's ready file (KAFKALITE_READY_FILE, which the
  image sets), so flags and config files that move the listeners are followed; no file yet
  means not ready, so unhealthy;
* the first listener configured through the environment (KAFKALITE_LISTENERS, else
  KAFKALITE_HOST and KAFKALITE_PORT).
A wildcard host (0.0.0.0, ::) is checked on loopback; a TLS listener (SSL, SASL_SSL) over TLS.
"""

import os
import sys


class NotReady(Exception):
    pass


def address_from_env(environ):
    from kafkalite.broker.settings.listeners import Listener

    ready_file = environ.get("KAFKALITE_READY_FILE", "").strip()
    if ready_file:
        try:
            with open(ready_file, encoding="utf-8") as f:
                line = f.read().strip()
        except FileNotFoundError:
            raise NotReady(f"no ready file {ready_file} yet") from None
        bound = [t.partition("=")[2] for t in line.split() if t.startswith("bound=")]
        if not bound or not bound[0]:
            raise NotReady(f"ready file {ready_file} names no bound listener: {line!r}")
        lis = Listener.parse_list(bound[0])[0]
        host, port = lis.host, lis.port
    elif environ.get("KAFKALITE_LISTENERS", "").strip():
        text = environ["KAFKALITE_LISTENERS"]
        lis = Listener.parse_list(text)[0]
        host, port = lis.host, lis.port
    else:
        host = environ.get("KAFKALITE_HOST") or "127.0.0.1"
        port = int(environ.get("KAFKALITE_PORT") or 9092)
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check(address, timeout=3.0):
    from kio.schema.api_versions.v0.request import ApiVersionsRequest

    from kafkalite.protocol.client import WireClient

    try:
        with WireClient(address, timeout=timeout, client_id="kafkalite-healthcheck") as client:
            response = client.request(ApiVersionsRequest())
    except (ConnectionError, OSError):
        # an SSL or SASL_SSL listener: ask again over TLS; liveness only, so the certificate is
        # not verified (a SASL listener answers ApiVersions before authentication)
        import ssl

        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with WireClient(address, timeout=timeout, client_id="kafkalite-healthcheck", ssl_context=context) as client:
            response = client.request(ApiVersionsRequest())
    code = int(getattr(response.error_code, "value", response.error_code))
    if code != 0:
        raise RuntimeError(f"ApiVersions answered error code {code}")
    return len(response.api_keys)


def main(argv):
    try:
        address = argv[0] if argv else address_from_env(os.environ)
        n = check(address)
    except Exception as exc:  # any failure is "unhealthy"
        print(f"kafkalite unhealthy: {exc}", file=sys.stderr)
        return 1
    print(f"kafkalite healthy: {address} serves {n} APIs")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
