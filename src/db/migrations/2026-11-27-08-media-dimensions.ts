import type { Kysely } from 'kysely';

// Frozen: a migration describes the schema as it was on its date and imports no application code.
//
// An image's width and height in pixels, read from its file's header when it is stored, so that the rules
// at create can hold it to a network's aspect ratios (Instagram's feed takes 4:5 to 1.91:1). Media stored
// before has none (null), as has a video or an image whose header does not say: the rules then leave its
// shape to the network.
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('media').addColumn('width', 'integer').addColumn('height', 'integer').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('media').dropColumn('height').dropColumn('width').execute();
}
