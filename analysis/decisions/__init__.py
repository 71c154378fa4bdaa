"""Decisions from run outcomes: certify or detect per cell (certify), spend a run budget (allocate),
estimate to a precision with an anytime-valid confidence sequence (confseq), price the annual loss
(insure, aggregate, evidence) and size a comparison (power). Pure functions; no I/O."""
