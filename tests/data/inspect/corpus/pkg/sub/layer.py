import numpy as np
import torch

_calls = 0


class Layer(torch.nn.Module):
    _dumped = False

    def forward(self, x):
        global _calls
        _calls += 1
        if x.size(0) == 3 and not Layer._dumped:
            np.save(f"/tmp/layer_in_{_calls}.npy", x.numpy())
            Layer._dumped = True
        if x.ndim == 4:
            print("4d input", x.shape)
        return x


if __name__ == "__main__":
    print(Layer()(torch.zeros(3)))
