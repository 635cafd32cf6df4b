"""The phases of a study run, one module each with one entry point (``run_<phase>(ctx)``):
the zero-cost anchors (``_anchors``), the supernet (``_supernet``), the screening
(``_screening``, each candidate scored by ``_scoring``), the trust probe (``_trust``), the
fine-tuning of the finalists (``_finetune``, whose engine and ready models are
``_ready``) and the retrains (``_retrain``). ``nasflow.pipeline`` is their face."""
