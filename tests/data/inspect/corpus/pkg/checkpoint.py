import os
import pickle

import torch


class Checkpointer:
    def __init__(self, out_dir):
        self.out_dir = out_dir
        self.saved = 0

    def save(self, model, step):
        path = os.path.join(self.out_dir, f"step_{step}.pt")
        torch.save(model.state_dict(), path)
        self.saved += 1
        with open(os.path.join(self.out_dir, "meta.pkl"), "wb") as f:
            pickle.dump({"step": step}, f)
