"""`specmon exporter`: specmon's own measurements of one or many servers, for Prometheus.

`metrics` holds the collector (prometheus-client families over the fleet's Views), `server` the
HTTP endpoint (`/metrics`, and `/probe?target=…` in the multi-target mode).
"""
