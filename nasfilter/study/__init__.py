"""Layer "study": ``reproduce`` and what it shows: the typed summaries, numbers, the NAS
figures and the HTML reports (also of any results database), the methods' catalogue."""
