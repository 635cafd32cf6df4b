"""What the pipeline does to one architecture: score it from the trained supernet
(``_scoring``), fine-tune it from its inherited weights into a ready model (``_ready``, the
engine of the fine-tuning phase and of the rungs), train it from scratch with the study's
recipe (``_training``), and save and find its weights on disk (``_winners``). The phases
(``nasflow.pipeline._phases``) decide which architectures; these modules do the work."""
