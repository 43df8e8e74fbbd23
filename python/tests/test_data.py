"""gluon.data: Fashion-MNIST, datasets written in Python, the DataLoader (workers running
Python transforms), image folders and the seed's transform pipeline."""
import numpy as onp
import pytest

import dlc
from dlc import gluon, np
from dlc.gluon.data.vision import transforms


def test_fashion_mnist_from_debian():
    train = gluon.data.vision.FashionMNIST(train=True)
    test = gluon.data.vision.FashionMNIST(train=False)
    assert len(train) == 60000 and len(test) == 10000
    image, label = train[0]
    assert image.shape == (28, 28, 1) and image.dtype == onp.uint8 and 0 <= label < 10
    assert train[-1][1] == train.labels[-1]
    assert gluon.data.vision.FashionMNIST.__name__ and len(train.classes) == 10
    with pytest.raises(IndexError):
        train[60000]
    with pytest.raises(dlc.DLCError, match="no-such-folder"):
        gluon.data.vision.FashionMNIST("/no-such-folder")


def test_data_loader_batches_shuffles_reproducibly_and_drops_the_last():
    data = onp.arange(10 * 3, dtype=onp.float32).reshape(10, 3)
    dataset = gluon.data.ArrayDataset(data, onp.arange(10))
    loader = gluon.data.DataLoader(dataset, batch_size=4, last_batch="discard")
    batches = list(loader)
    assert len(loader) == 2 and [b[0].shape for b in batches] == [(4, 3), (4, 3)]
    assert batches[1][1].asnumpy().tolist() == [4, 5, 6, 7]
    assert [b[0].shape[0] for b in gluon.data.DataLoader(dataset, 4)] == [4, 4, 2]

    def order(seed):
        loader = gluon.data.DataLoader(dataset, 5, shuffle=True, num_workers=2, seed=seed)
        return [b[1].asnumpy().tolist() for b in loader]

    assert order(3) == order(3) and order(3) != order(4)
    assert sorted(sum(order(3), [])) == list(range(10))
    with pytest.raises(ValueError):
        gluon.data.DataLoader(dataset, batch_size=0)
    with pytest.raises(NotImplementedError, match="sampler"):
        gluon.data.DataLoader(dataset, 2, sampler=[0, 1])


class Squares(gluon.data.Dataset):
    """A dataset written in Python."""

    def __len__(self):
        return 12

    def __getitem__(self, index):
        return onp.full((2,), index * index, dtype=onp.float32), index % 3


def test_python_datasets_and_transforms_run_on_worker_threads():
    dataset = Squares().transform_first(lambda x: x + 1)
    loader = gluon.data.DataLoader(dataset, batch_size=4, num_workers=2)
    batches = list(loader)
    assert [b[0][:, 0].asnumpy().tolist() for b in batches] == [
        [1, 2, 5, 10], [17, 26, 37, 50], [65, 82, 101, 122]]
    assert batches[0][1].asnumpy().tolist() == [0, 1, 2, 0]
    transformed = Squares().transform(lambda x, y: (x * 2, y + 10))
    assert transformed[4][1] == 11 and onp.asarray(transformed[4][0]).tolist() == [32, 32]


def test_an_error_in_a_worker_reaches_the_loop_with_its_message():
    def broken(x):
        raise RuntimeError("transform broke on purpose")

    loader = gluon.data.DataLoader(Squares().transform_first(broken), 4, num_workers=2)
    with pytest.raises(Exception, match="transform broke on purpose"):
        list(loader)


def test_image_folders_with_the_seeds_pipeline(tmp_path):
    rng = onp.random.RandomState(0)
    for name in ["healthy", "stressed"]:
        (tmp_path / name).mkdir()
        for k in range(3):
            image = rng.randint(0, 255, (40, 50, 3)).astype(onp.uint8)
            gluon.data.vision.save_image(image, str(tmp_path / name / f"{k}.png"))
    (tmp_path / "healthy" / "notes.png").write_text("not an image")
    dataset = gluon.data.vision.ImageFolderDataset(str(tmp_path), skip_unreadable=True)
    assert len(dataset) == 6 and dataset.synsets == ["healthy", "stressed"]
    image, label = dataset[4]
    assert image.shape == (40, 50, 3) and label == 1
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    training_transformer = transforms.Compose([
        transforms.Resize(size=32, keep_ratio=True), transforms.CenterCrop(24),
        transforms.RandomFlipLeftRight(), transforms.RandomColorJitter(contrast=0.05),
        transforms.ToTensor(), transforms.Normalize(mean, std)])
    loader = gluon.data.DataLoader(dataset.transform_first(training_transformer), batch_size=4,
                                   shuffle=True, try_nopython=True, num_workers=2)
    shapes = [b[0].shape for b in loader]
    assert shapes == [(4, 3, 24, 24), (2, 3, 24, 24)]
    plain = transforms.Compose([transforms.ToTensor(), lambda x: x * 0 + 1])
    assert float(plain(dataset[0][0]).mean()) == 1.0
    strict = gluon.data.vision.ImageFolderDataset(str(tmp_path))
    with pytest.raises(dlc.DLCError, match="notes.png"):
        [strict[i] for i in range(len(strict))]
