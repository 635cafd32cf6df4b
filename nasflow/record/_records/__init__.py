"""The typed study records, one module per part: the records the phases write
(``_phases``), the measured ones (``_measured``: the stack's, the cost table's, the
multipliers'), the fine-tuning phase's (``_finetuned``) and the rung schedule's
(``_rungs``). ``nasflow.record`` is their face."""
