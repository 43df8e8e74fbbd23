"""The networks of MXNet's GPU tutorial, written with dlc's Gluon API exactly as the
tutorial writes them with MXNet's (only the imports differ)."""
from dlc.gluon import nn


# A convolution block: convolution, max pooling and (optionally) batch normalization.
def conv_block(filters, kernel_size=2, stride=2, batch_norm=True):
    conv_block = nn.HybridSequential()
    conv_block.add(nn.Conv2D(channels=filters, kernel_size=kernel_size, activation='relu'),
                   nn.MaxPool2D(pool_size=4, strides=stride))
    if batch_norm:
        conv_block.add(nn.BatchNorm())
    return conv_block


# A dense block: a fully connected layer and dropout.
def dense_block(neurons, activation='relu', dropout=0.2):
    dense_block = nn.HybridSequential()
    dense_block.add(nn.Dense(neurons, activation=activation))
    if dropout:
        dense_block.add(nn.Dropout(dropout))
    return dense_block


class LeafNetwork(nn.HybridBlock):
    """The tutorial's network (2 classes, 128x128 RGB leaves)."""

    def __init__(self):
        super(LeafNetwork, self).__init__()
        self.conv1 = conv_block(32)
        self.conv2 = conv_block(64)
        self.conv3 = conv_block(128)
        self.flatten = nn.Flatten()
        self.dense1 = dense_block(100)
        self.dense2 = dense_block(10)
        self.dense3 = nn.Dense(2)

    def forward(self, batch):
        batch = self.conv1(batch)
        batch = self.conv2(batch)
        batch = self.conv3(batch)
        batch = self.flatten(batch)
        batch = self.dense1(batch)
        batch = self.dense2(batch)
        batch = self.dense3(batch)
        return batch


def fashion_network():
    """The LeafNetwork's blocks sized for 28x28 Fashion-MNIST images (what dlc-train
    trains): three padded 3x3 convolution blocks, then dense 100, 10 and 10."""
    def block(channels):
        b = nn.HybridSequential()
        b.add(nn.Conv2D(channels, 3, activation='relu', padding=1),
              nn.MaxPool2D(2, 2), nn.BatchNorm())
        return b

    net = nn.HybridSequential()
    net.add(block(32), block(64), block(128), nn.Flatten(),
            nn.Dense(100, activation='relu'), nn.Dropout(0.2),
            nn.Dense(10, activation='relu'), nn.Dropout(0.2),
            nn.Dense(10))
    return net
