"""The results store and what reads it: provenance, statistics, analysis, latency reports, campaign
comparison, notebook reports."""
