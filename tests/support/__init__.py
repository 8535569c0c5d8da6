"""Test support code shared by test modules (test doubles for services the project calls)."""
