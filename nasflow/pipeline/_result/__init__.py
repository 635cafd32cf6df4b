"""What a finished run says: the result first (``_headline``: the kept model, what it
beats, the verdicts, the export command; the report's headline too), then the detail
behind ``--verbose`` (``_summary``). ``nasflow.pipeline`` is their face."""
