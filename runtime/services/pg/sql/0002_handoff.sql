-- A lease another process asked for (`wanted_at`), and the holder's answer when it
-- keeps the session (`refused`: why); both cleared when the lease changes hands.
ALTER TABLE adk_leases ADD COLUMN wanted_at timestamptz;
ALTER TABLE adk_leases ADD COLUMN refused text;
