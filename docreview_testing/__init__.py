"""Test doubles and document generators: the Messages-API/Converse test server, sample contracts with ground truth, hostile documents. Not imported by the pipeline."""
