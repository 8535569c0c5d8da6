"""Asset checks: the gates. Blocking checks stop downstream assets in the same run."""
