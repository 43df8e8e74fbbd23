"""MXNet's GPU tutorial, its device half, on dlc: the tutorial's code with the imports
changed. Without GPUs it uses cpu(0) and cpu(1), which dlc treats as two devices.

    PYTHONPATH=build/python python3 examples/python/devices.py
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dlc import np, npx  # was: from mxnet import np, npx
from leafnet import LeafNetwork  # noqa: E402

npx.set_np()

print("GPUs dlc can use:", npx.num_gpus())
gpu = npx.gpu() if npx.num_gpus() > 0 else npx.cpu()

# Data on a device: creation ops take device=.
x = np.ones((3, 4), device=gpu)
print(x)

# Another device: copies are explicit.
gpu_1 = npx.gpu(1) if npx.num_gpus() > 1 else npx.cpu(1)
print(x.copyto(gpu_1))

# Ops run where their inputs are.
y = np.random.uniform(size=(3, 4), device=gpu)
print(x + y)
try:
    x + y.copyto(gpu_1)
except Exception as error:  # inputs on two devices: an error naming both
    print(type(error).__name__ + ":", str(error).splitlines()[0])

# A default device for a block of code.
with gpu_1:
    print("created in the scope:", np.zeros(2).device)

# A network on a device: parameters loaded there (saved here first, as the tutorial's
# leaf_models.params was by its earlier step; a .params file MXNet saved loads the same).
net = LeafNetwork()
net.initialize(device=npx.cpu())
net(np.random.uniform(size=(1, 3, 128, 128)))  # settles the deferred shapes
params = os.path.join(tempfile.mkdtemp(), "leaf_models.params")
net.save_parameters(params)
net = LeafNetwork()
net.load_parameters(params, device=gpu)
x = np.random.uniform(size=(1, 3, 128, 128), device=gpu)
print("prediction on", gpu, net(x))

# Or move an initialized network's parameters.
net.collect_params().reset_device(gpu_1)
print("prediction on", gpu_1, net(x.copyto(gpu_1)))
