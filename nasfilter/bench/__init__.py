"""Layer "bench": the data sources. Search spaces, datasets, benchmark tables (real,
surrogate, converted archives), learning curves, the networks' layer tables and costs,
proxy tables, and the nats_bench-compatible API. Imports only the top-level leaves."""
