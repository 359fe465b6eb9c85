"""Layer "runs": one run and many. Specs and records, the runner, a spec's inputs,
storage, results and metrics, fronts, export, and experiments over seeds and workers.
Imports sim, searchers, filters, oracle and bench below it."""
