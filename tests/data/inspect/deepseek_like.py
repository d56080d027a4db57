# A small lookalike of an MLA attention model file (written for driftscan's tests, not copied
# from vLLM): ordinary shape conditions, logging, no debug code.
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class FusedQkvAProj(nn.Module):
    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.weight = nn.Parameter(weight)
        # The fused kernel only exists for one projection size.
        self._use_fused_kernel = (
            self.weight.dtype == torch.bfloat16
            and self.weight.shape[0] == 2112
            and self.weight.shape[1] == 7168
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._use_fused_kernel:
            return torch.ops.fused.qkv_a_proj(x, self.weight)
        return x @ self.weight.t()


class DeepseekV2MLAAttention(nn.Module):
    def __init__(self, hidden_size: int, kv_lora_rank: int):
        super().__init__()
        self.hidden_size = hidden_size
        self.kv_lora_rank = kv_lora_rank
        self.mla_attn = nn.Identity()

    def forward(
        self,
        positions: torch.Tensor,
        hidden_states: torch.Tensor,
    ) -> torch.Tensor:
        return self.mla_attn(hidden_states)


class DeepseekV2DecoderLayer(nn.Module):
    def __init__(self, hidden_size: int):
        super().__init__()
        self.self_attn = DeepseekV2MLAAttention(hidden_size, 512)

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        full_num_tokens = positions.shape[0]
        if hidden_states.shape[0] != full_num_tokens:
            logger.debug("padding %d tokens", full_num_tokens - hidden_states.shape[0])
            hidden_states = hidden_states[:full_num_tokens]
        residual = hidden_states
        hidden_states = self.self_attn(positions, hidden_states)
        return hidden_states + residual


class DeepseekV2Model(nn.Module):
    def __init__(self, num_layers: int, hidden_size: int):
        super().__init__()
        self.layers = nn.ModuleList(DeepseekV2DecoderLayer(hidden_size) for _ in range(num_layers))

    def forward(self, positions: torch.Tensor, hidden_states: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            hidden_states = layer(positions, hidden_states)
        if hidden_states.shape[0] != positions.shape[0]:
            hidden_states = hidden_states[: positions.shape[0]]
        return hidden_states
