// Replaced by the database test harness (template database creation) as the spine lands.
export default async function setup() {}
