"""Training as one of several processes (Horovod's and torch.distributed's role).

Launch the script with ``mpirun -np N python script.py``; ``dist.init()`` joins the job.
Each process runs the same loop on its devices (``dist.local_devices(job_devices)``)
with its share of every batch (``DataLoader.shard(dist.rank(), dist.size())``);
``gluon.Trainer.step`` and the compiled ``TrainStep`` then sum the gradients over every
process. Launched without mpirun a script is a job of one.
"""
from ._dlc.dist import (all_reduce, barrier, broadcast, broadcast_parameters, describe, init,
                        local_devices, local_rank, local_size, rank, size)

__all__ = ["init", "rank", "size", "local_rank", "local_size", "describe", "barrier",
           "local_devices", "all_reduce", "broadcast", "broadcast_parameters"]
