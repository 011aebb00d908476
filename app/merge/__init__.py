"""What the finisher's merge pass reads and writes beside the merged report: carried
flags, each flag's report, the per-file summary and line windows the pages read.
"""
