"""Silver: the decoded tables. The offset commits written by the decoding tasks, and the
membership tables (classic, KIP-848, streams groups) decoded from the bronze records.

Imports only ``read``.
"""
