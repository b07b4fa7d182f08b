"""The papers' tables as data, and reproducing them: table files, the reproduce run, its figures and report."""
