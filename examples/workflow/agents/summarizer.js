// The task is the node's prompt, with the earlier nodes' outputs already filled in.
text(`Summary: ${task.trim()}`);
