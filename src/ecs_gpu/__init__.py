"""ecs-gpu."""
