"""The phases of a study run, one module each with one entry point (``run_<phase>(ctx)``):
the zero-cost anchors (``_anchors``), the supernet (``_supernet``), the screening
(``_screening``), the trust probe (``_trust``), the fine-tuning of the finalists
(``_finetune``) and the retrains (``_retrain``), or the rung schedule in place of the last
two (``_rungs``). What they do to one architecture is ``nasflow.pipeline._arch``;
``nasflow.pipeline`` is their face."""
