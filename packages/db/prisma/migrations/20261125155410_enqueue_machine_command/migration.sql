-- Queues one command for an external machine in one round trip (issue 16). The same steps as the interactive
-- transaction it replaces (packages/core/src/machines-service/external-dispatch.ts): lock the machine row,
-- check its status and the frame precondition, expire outstanding commands past their deadline, refuse when
-- one is still outstanding, take the next sequence number and insert the command. A VOLATILE PL/pgSQL
-- function runs each statement with a fresh snapshot after the row lock (READ COMMITTED), exactly as the
-- statements of that transaction did, so concurrent dispatches from several API processes still serialise
-- on the machine row and at most one command per machine is outstanding.
-- outcome: queued | not_found | invalid_state | precondition_failed | busy
CREATE OR REPLACE FUNCTION enqueue_machine_command(
  p_machine_id text,
  p_command_id text,
  p_command text,
  p_parameters jsonb,
  p_capability text,
  p_precondition_frame_id text,
  p_deadline timestamptz,
  p_now timestamptz
) RETURNS TABLE (outcome text, machine_status text, fencing_token integer, last_frame_id text, seq integer)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  m record;
BEGIN
  SELECT mc.status, mc.fencing_token, mc.last_frame_id, mc.command_seq INTO m
    FROM machines mc WHERE mc.id = p_machine_id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'not_found'::text, NULL::text, NULL::integer, NULL::text, NULL::integer;
    RETURN;
  END IF;
  IF m.status <> 'running' THEN
    RETURN QUERY SELECT 'invalid_state'::text, m.status::text, m.fencing_token, m.last_frame_id::text, NULL::integer;
    RETURN;
  END IF;
  IF p_precondition_frame_id IS NOT NULL AND p_precondition_frame_id IS DISTINCT FROM m.last_frame_id THEN
    RETURN QUERY SELECT 'precondition_failed'::text, m.status::text, m.fencing_token, m.last_frame_id::text,
      NULL::integer;
    RETURN;
  END IF;
  UPDATE machine_commands c SET status = 'expired', completed_at = p_now
   WHERE c.machine_id = p_machine_id AND c.status IN ('queued', 'delivered') AND c.deadline < p_now;
  PERFORM 1 FROM machine_commands c WHERE c.machine_id = p_machine_id AND c.status IN ('queued', 'delivered') LIMIT 1;
  IF FOUND THEN
    RETURN QUERY SELECT 'busy'::text, m.status::text, m.fencing_token, m.last_frame_id::text, NULL::integer;
    RETURN;
  END IF;
  UPDATE machines SET command_seq = m.command_seq + 1, updated_at = p_now WHERE id = p_machine_id;
  INSERT INTO machine_commands (id, machine_id, seq, command, parameters, capability, fencing_token,
                                precondition_frame_id, deadline, status, created_at)
  VALUES (p_command_id, p_machine_id, m.command_seq + 1, p_command, p_parameters, p_capability, m.fencing_token,
          p_precondition_frame_id, p_deadline, 'queued', p_now);
  RETURN QUERY SELECT 'queued'::text, m.status::text, m.fencing_token, m.last_frame_id::text, m.command_seq + 1;
END;
$$;
