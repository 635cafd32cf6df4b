"""What runs where and when: the rung ladder, successive halving over fidelities in
Optuna (``_ladder``), and the trainings after screening as tasks any process of the study
takes through its storage (``_tasks``)."""
