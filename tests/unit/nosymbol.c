/*
 * A test shared object that is not a gwsync plugin: it exports a function, but not the
 * gwsync_subscriber() entry point. The loader must refuse it with a clear message.
 */
int not_a_gwsync_plugin(void);

int not_a_gwsync_plugin(void)
{
	return 42;
}
