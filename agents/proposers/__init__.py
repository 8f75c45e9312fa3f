"""Model-driven proposers: a chat model's edit (`openai`) or a coding-agent CLI's file."""

from qrsup.agents.proposers.chat import ModelConfig
from qrsup.agents.proposers.command_proposer import CommandConfig, CommandProposer
from qrsup.agents.proposers.openai_proposer import OpenAIProposer
from qrsup.agents.proposers.retry import RetryPolicy

__all__ = ["CommandConfig", "CommandProposer", "ModelConfig", "OpenAIProposer", "RetryPolicy"]
