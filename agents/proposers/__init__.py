"""Model-driven proposers: a chat model's edit (`openai`) or a coding-agent CLI's file."""

from agents.proposers.chat import ModelConfig
from agents.proposers.command_proposer import CommandConfig, CommandProposer
from agents.proposers.openai_proposer import OpenAIProposer
from agents.proposers.retry import RetryPolicy

__all__ = ["CommandConfig", "CommandProposer", "ModelConfig", "OpenAIProposer", "RetryPolicy"]
