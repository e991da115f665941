"""Tests of ecs-gpu doctor: checks, host probe, collector, CLI."""
