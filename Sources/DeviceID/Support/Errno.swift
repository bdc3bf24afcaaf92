import CDeviceIDLibc

/// The calling thread's errno, through the C library module both builds share (the Glibc
/// overlay's `errno`, which Embedded Swift does not have).
package var errno: Int32 {
    get { dids_errno() }
    set { dids_set_errno(newValue) }
}
