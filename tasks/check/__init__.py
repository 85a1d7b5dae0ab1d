"""Check: fact-check findings against the source, consistency, absences, hostile-document guards."""
