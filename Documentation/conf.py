# SPDX-License-Identifier: GPL-2.0-only
# Sphinx settings for ntrace's Documentation/: "make htmldocs" renders it,
# "make docs-check" (part of "make check") fails on any warning.
project = 'ntrace'
root_doc = 'index'
exclude_patterns = ['devicetree']
# the pages are plain reStructuredText, as the kernel's are: no extension
extensions = []
html_theme = 'alabaster'
