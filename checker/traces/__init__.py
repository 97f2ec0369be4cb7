"""Traces and what is made of them: ITF on disk, replay against the model, the text view, the
message-sequence chart and the HTML report, a trace rendered to a file, the abstract state diagram,
and where a check writes its counterexamples."""
