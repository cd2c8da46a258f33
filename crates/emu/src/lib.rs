//! Linux glue: namespaces, TUN devices, the forwarder.
