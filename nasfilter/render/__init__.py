"""Layer "render": drawing helpers every figure shares, and the self-contained HTML page.
Used by the survey and the study above it."""
