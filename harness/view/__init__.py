"""`agentrel view`: a local, read-only web face over a results directory.

index.py reads runs.jsonl once (then only what an audit appends) into light per-run summaries;
evidence.py reloads one run's record, transcript and dumps and re-runs the labeller over the dumps to
name the rule behind every changed row; pages.py, run_html.py and run_diff.py turn both into page data
(pure), drawn by the autoescaped templates in templates/ (html.py, templates.py);
app.py is the HTTP edge. Nothing here writes into the results directory.
"""
