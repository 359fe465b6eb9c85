"""Layer "sim": the core simulation. The metered problem (clock, meter, trace,
fidelities), the event schema, trials, and the plugin base searchers and filters share.
Imports bench and oracle below it."""
