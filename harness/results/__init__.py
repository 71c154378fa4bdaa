"""The one owner of the results directory.

- `layout`: every file and folder name in it;
- `status`: the status vocabulary and the status rule (pure);
- `attempts`: the decisive-attempt rule (pure): the first terminal attempt decides;
- `destroyed`: the `state destroyed` verdict (pure) of a state unreadable after the subject acted;
- `journal`: the hash chain over runs.jsonl's lines (pure), anchored in the registry;
- `manifest`: the typed `Manifest`, the preregistered matrix;
- `record`: the versioned `RunRecord`, one line of runs.jsonl per attempt;
- `directory`: `ResultsDir`, the reader and writer (records, dumps, transcripts, receipts).

The runner writes through `ResultsDir`; analysis, the view, publication and the Inspect scorer read
through it or through the rules here. Nothing else names a file of the directory or decides a status.
The submodules import nothing heavy at package import, so analysis can take `status` and `attempts`
without the record model's dependencies.
"""
