"""The peers' side of the benchmarks that compare against transformers: scripts run in a Python
with torch and transformers (`--reference_python`), which need not have kbert. Each prints one
JSON line of its timings; nothing here imports torch at import time."""
